// Command deviceplugin is a fake GPU device plugin for the real node of
// test/cluster (realnode.sh): it registers nvidia.com/gpu with the kubelet
// through the kubelet's device-plugin API (v1beta1) and advertises -count
// healthy devices gpu-0 … gpu-<count-1>. The kubelet then does what it does
// with real GPUs: counts them in the Node's capacity, admits a pod only if
// enough are free, and picks distinct devices for each container, which
// Allocate hands to the container as NVIDIA_VISIBLE_DEVICES (as NVIDIA's
// plugin does), so a test can check that no two running containers share a
// GPU.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

const resourceName = "nvidia.com/gpu"

func main() {
	dir := flag.String("dir", pluginapi.DevicePluginPath, "the kubelet's device-plugin directory (<root-dir>/device-plugins)")
	count := flag.Int("count", 4, "devices to advertise")
	flag.Parse()
	p := &plugin{devices: devices(*count)}
	socket := filepath.Join(*dir, "phasegang-gpu.sock")
	if err := serve(p, socket); err != nil {
		log.Fatal(err)
	}
	if err := register(filepath.Join(*dir, filepath.Base(pluginapi.KubeletSocket)), socket); err != nil {
		log.Fatal(err)
	}
	log.Printf("registered %s with %d devices on %s", resourceName, *count, socket)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	os.Remove(socket)
}

func devices(n int) []*pluginapi.Device {
	out := make([]*pluginapi.Device, n)
	for i := range out {
		out[i] = &pluginapi.Device{ID: fmt.Sprintf("gpu-%d", i), Health: pluginapi.Healthy}
	}
	return out
}

// serve starts the plugin's gRPC server on socket.
func serve(p *plugin, socket string) error {
	os.Remove(socket)
	ln, err := net.Listen("unix", socket)
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, p)
	go func() {
		if err := srv.Serve(ln); err != nil {
			log.Fatal(err)
		}
	}()
	return nil
}

// register tells the kubelet where the plugin serves, retrying while the
// kubelet's socket does not exist yet.
func register(kubelet, socket string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		err := registerOnce(ctx, kubelet, socket)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("registering with %s: %w", kubelet, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func registerOnce(ctx context.Context, kubelet, socket string) error {
	if _, err := os.Stat(kubelet); err != nil {
		return err
	}
	conn, err := grpc.NewClient("unix://"+kubelet, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     filepath.Base(socket),
		ResourceName: resourceName,
	})
	return err
}

type plugin struct {
	pluginapi.UnimplementedDevicePluginServer
	devices []*pluginapi.Device
}

func (p *plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the devices once; they never change health.
func (p *plugin) ListAndWatch(_ *pluginapi.Empty, s pluginapi.DevicePlugin_ListAndWatchServer) error {
	if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: p.devices}); err != nil {
		return err
	}
	<-s.Context().Done()
	return nil
}

// Allocate hands each container the IDs the kubelet chose for it.
func (p *plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for _, c := range req.ContainerRequests {
		ids := strings.Join(c.DevicesIds, ",")
		log.Printf("allocate %s", ids)
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{"NVIDIA_VISIBLE_DEVICES": ids},
		})
	}
	return resp, nil
}

func (p *plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}
