// Command trainer does what a synchronous data-parallel worker does, with no
// framework: rank 0 listens on MASTER_PORT, every other rank connects to
// MASTER_ADDR (retrying while the name does not resolve yet), and no rank
// "trains" until all WORLD_SIZE ranks are connected. Then it runs a few
// all-reduce rounds (each rank sends its value to rank 0, which sums and
// broadcasts) and writes its outputs to the termination message.
//
// Everything it does is printed, one line per event, so the real-node e2e
// tests (test/e2e, TestReal*) assert on what the processes saw:
//
//	rendezvous: waiting for 4 ranks
//	rendezvous: 2/4 connected
//	rendezvous: complete after 1.2s
//	resolved train-1.p.ns.svc after 312ms
//	allreduce round 1/3: sum=10
//	done: {"loss":"0.25",...}
//
// Behaviour is set by environment variables (phasegang sets RANK,
// WORLD_SIZE, MASTER_ADDR, MASTER_PORT, PHASEGANG_PEERS, PHASEGANG_ATTEMPT):
//
//	TRAINER_MODE          train (default) or validate (reads the checkpoint)
//	TRAINER_ROUNDS        all-reduce rounds (default 3)
//	TRAINER_ROUND_SECONDS sleep per round (default 0.2)
//	TRAINER_ACCURACY      the accuracy train writes to its checkpoint (default 0.9)
//	TRAINER_DIR           a directory shared by the pipeline's phases: the
//	                      checkpoint and SIGTERM markers go there
//	TRAINER_FAIL_RANK, TRAINER_FAIL_ROUND
//	                      this rank exits 1 at that round, on attempt 0 only
//	TRAINER_RESOLVE_PEERS 1: resolve every name in PHASEGANG_PEERS first and
//	                      print how long each took
//
// On SIGTERM it writes a marker (TRAINER_DIR/sigterm-<phase>-<rank>) holding
// the round it reached and exits 143, within any grace period. On peer loss
// it waits, as a collective does until its timeout, rather than exit: only
// the gang's owner can end a gang with a dead member.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

var start = time.Now()

// round is the all-reduce round reached, read by the SIGTERM handler.
var round atomic.Int64

func main() {
	cfg := readConfig()
	handleSIGTERM(cfg)
	logf("rank %d/%d, phase %s, attempt %d, master %s:%s, gpus %s", cfg.rank, cfg.world, cfg.phase, cfg.attempt, cfg.masterAddr, cfg.masterPort, os.Getenv("NVIDIA_VISIBLE_DEVICES"))
	reportResume(cfg)
	if cfg.resolvePeers {
		resolvePeers(cfg.peers)
	}
	var outputs map[string]string
	switch cfg.mode {
	case "validate":
		outputs = validate(cfg)
	default:
		outputs = train(cfg)
	}
	writeTermination(outputs)
	logf("done: %s", mustJSON(outputs))
}

type config struct {
	mode                   string
	rank, world            int
	attempt                int
	phase                  string
	masterAddr, masterPort string
	peers                  []string
	rounds                 int
	roundDur               time.Duration
	accuracy               string
	dir                    string
	failRank, failRound    int
	resolvePeers           bool
}

func readConfig() config {
	c := config{
		mode:         env("TRAINER_MODE", "train"),
		rank:         envInt("RANK", 0),
		world:        envInt("WORLD_SIZE", 1),
		attempt:      envInt("PHASEGANG_ATTEMPT", 0),
		phase:        env("PHASEGANG_PHASE", "train"),
		masterAddr:   env("MASTER_ADDR", "localhost"),
		masterPort:   env("MASTER_PORT", "29500"),
		rounds:       envInt("TRAINER_ROUNDS", 3),
		accuracy:     env("TRAINER_ACCURACY", "0.9"),
		dir:          os.Getenv("TRAINER_DIR"),
		failRank:     envInt("TRAINER_FAIL_RANK", -1),
		failRound:    envInt("TRAINER_FAIL_ROUND", -1),
		resolvePeers: os.Getenv("TRAINER_RESOLVE_PEERS") == "1",
	}
	secs, err := strconv.ParseFloat(env("TRAINER_ROUND_SECONDS", "0.2"), 64)
	if err != nil {
		fatalf("TRAINER_ROUND_SECONDS: %v", err)
	}
	c.roundDur = time.Duration(secs * float64(time.Second))
	if p := os.Getenv("PHASEGANG_PEERS"); p != "" {
		c.peers = strings.Split(p, ",")
	}
	return c
}

// handleSIGTERM writes the checkpoint marker and exits, as a trainer that
// saves on preemption does.
func handleSIGTERM(cfg config) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM)
	go func() {
		<-c
		r := round.Load()
		if cfg.dir != "" {
			marker := filepath.Join(cfg.dir, fmt.Sprintf("sigterm-%s-%d", cfg.phase, cfg.rank))
			if err := os.WriteFile(marker, []byte(strconv.FormatInt(r, 10)), 0o644); err != nil {
				logf("SIGTERM: writing checkpoint marker: %v", err)
				os.Exit(1)
			}
			logf("SIGTERM at round %d: checkpoint marker %s written", r, marker)
		} else {
			logf("SIGTERM at round %d", r)
		}
		os.Exit(143)
	}()
}

// reportResume prints the SIGTERM markers an earlier attempt left.
func reportResume(cfg config) {
	if cfg.dir == "" {
		return
	}
	marker := filepath.Join(cfg.dir, fmt.Sprintf("sigterm-%s-%d", cfg.phase, cfg.rank))
	if b, err := os.ReadFile(marker); err == nil {
		logf("resumed: checkpoint marker from round %s found", strings.TrimSpace(string(b)))
	}
}

// resolvePeers looks every peer's name up until it resolves, and prints
// how long after the process started it did.
func resolvePeers(peers []string) {
	for _, p := range peers {
		for tries := 1; ; tries++ {
			addrs, err := net.LookupHost(p)
			if err == nil {
				logf("resolved %s to %s after %dms (%d tries)", p, addrs[0], time.Since(start).Milliseconds(), tries)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// train rendezvouses, all-reduces, and writes a checkpoint (rank 0).
func train(cfg config) map[string]string {
	conns := rendezvous(cfg)
	var sum float64
	for r := 1; r <= cfg.rounds; r++ {
		round.Store(int64(r))
		if cfg.rank == cfg.failRank && r == cfg.failRound && cfg.attempt == 0 {
			logf("failing on purpose at round %d", r)
			os.Exit(1)
		}
		time.Sleep(cfg.roundDur)
		sum = allReduce(cfg, conns, float64(cfg.rank+1))
		logf("allreduce round %d/%d: sum=%g", r, cfg.rounds, sum)
	}
	loss := 1 / (1 + sum)
	out := map[string]string{"loss": strconv.FormatFloat(loss, 'f', 4, 64), "allreduce": strconv.Itoa(cfg.rounds)}
	if cfg.rank == 0 && cfg.dir != "" {
		ckpt := mustJSON(map[string]string{"loss": out["loss"], "accuracy": cfg.accuracy, "world": strconv.Itoa(cfg.world)})
		if err := os.WriteFile(filepath.Join(cfg.dir, "checkpoint.json"), []byte(ckpt), 0o644); err != nil {
			fatalf("writing checkpoint: %v", err)
		}
		logf("checkpoint written: %s", ckpt)
	}
	return out
}

// validate reads train's checkpoint and reports its accuracy.
func validate(cfg config) map[string]string {
	b, err := os.ReadFile(filepath.Join(cfg.dir, "checkpoint.json"))
	if err != nil {
		fatalf("validate: reading the checkpoint: %v", err)
	}
	var ckpt map[string]string
	if err := json.Unmarshal(b, &ckpt); err != nil {
		fatalf("validate: checkpoint: %v", err)
	}
	logf("validate: checkpoint %s", b)
	return map[string]string{"accuracy": ckpt["accuracy"], "loss": ckpt["loss"]}
}

// rendezvous connects the ranks: rank 0 accepts WORLD_SIZE-1 connections,
// then tells every rank to start. It returns rank 0's connections to the
// others, or the other ranks' one connection to rank 0.
func rendezvous(cfg config) []net.Conn {
	if cfg.world <= 1 {
		logf("rendezvous: complete (world of 1)")
		return nil
	}
	if cfg.rank == 0 {
		return acceptAll(cfg)
	}
	conn := dialMaster(cfg)
	fmt.Fprintf(conn, "%d\n", cfg.rank)
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "start" {
		lostPeer(fmt.Sprintf("rank 0 before start (%v)", err))
	}
	logf("rendezvous: complete after %s", time.Since(start).Round(time.Millisecond))
	return []net.Conn{conn}
}

func acceptAll(cfg config) []net.Conn {
	ln, err := net.Listen("tcp", ":"+cfg.masterPort)
	if err != nil {
		fatalf("listen :%s: %v", cfg.masterPort, err)
	}
	logf("rendezvous: waiting for %d ranks", cfg.world)
	conns := make([]net.Conn, cfg.world)
	for n := 1; n < cfg.world; {
		c, err := ln.Accept()
		if err != nil {
			fatalf("accept: %v", err)
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		r, perr := strconv.Atoi(strings.TrimSpace(line))
		if err != nil || perr != nil || r <= 0 || r >= cfg.world || conns[r] != nil {
			logf("rendezvous: bad hello %q from %s", line, c.RemoteAddr())
			c.Close()
			continue
		}
		conns[r] = c
		n++
		logf("rendezvous: %d/%d connected (rank %d from %s)", n, cfg.world, r, c.RemoteAddr())
	}
	for _, c := range conns[1:] {
		fmt.Fprintln(c, "start")
	}
	logf("rendezvous: complete after %s", time.Since(start).Round(time.Millisecond))
	return conns[1:]
}

// dialMaster retries until rank 0 answers: its name may not resolve yet,
// and it may not listen yet.
func dialMaster(cfg config) net.Conn {
	addr := net.JoinHostPort(cfg.masterAddr, cfg.masterPort)
	var last string
	for {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err == nil {
			logf("rendezvous: connected to %s after %s", addr, time.Since(start).Round(time.Millisecond))
			return c
		}
		if msg := err.Error(); msg != last {
			logf("rendezvous: waiting for %s: %v", addr, err)
			last = msg
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// allReduce sums v over the ranks through rank 0 (a star, not a ring: the
// point is that every rank waits for every other).
func allReduce(cfg config, conns []net.Conn, v float64) float64 {
	if cfg.world <= 1 {
		return v
	}
	if cfg.rank != 0 {
		fmt.Fprintf(conns[0], "%g\n", v)
		return readFloat(conns[0], "rank 0")
	}
	sum := v
	for i, c := range conns {
		sum += readFloat(c, "rank "+strconv.Itoa(i+1))
	}
	for _, c := range conns {
		fmt.Fprintf(c, "%g\n", sum)
	}
	return sum
}

// readers keeps one buffered reader per connection across rounds.
var readers = map[net.Conn]*bufio.Reader{}

func readFloat(c net.Conn, who string) float64 {
	r, ok := readers[c]
	if !ok {
		r = bufio.NewReader(c)
		readers[c] = r
	}
	line, err := r.ReadString('\n')
	if err != nil {
		lostPeer(fmt.Sprintf("%s (%v)", who, err))
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(line), 64)
	if err != nil {
		fatalf("bad value %q from %s", line, who)
	}
	return f
}

// lostPeer blocks, as NCCL and gloo collectives do until their timeout:
// a gang with a dead member must be ended by whoever runs the gang.
func lostPeer(who string) {
	logf("lost peer %s: waiting (a collective would, until its timeout)", who)
	select {}
}

func writeTermination(outputs map[string]string) {
	if err := os.WriteFile("/dev/termination-log", []byte(mustJSON(outputs)), 0o644); err != nil {
		logf("termination message: %v", err)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func logf(format string, args ...any) {
	fmt.Printf("%7.3fs "+format+"\n", append([]any{time.Since(start).Seconds()}, args...)...)
}

func fatalf(format string, args ...any) {
	logf("fatal: "+format, args...)
	os.Exit(2)
}

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func envInt(k string, def int) int {
	v := os.Getenv(k)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		fatalf("%s=%q: %v", k, v, err)
	}
	return n
}
