package tracing

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// DefaultServiceName is the service.name of phasegang's spans unless
// OTEL_SERVICE_NAME says otherwise.
const DefaultServiceName = "phasegang"

// Tracing is an exporting tracer and the provider behind it.
type Tracing struct {
	Tracer   *OTelTracer
	Provider *sdktrace.TracerProvider
}

// Shutdown flushes the spans not yet exported and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.Provider == nil {
		return nil
	}
	return t.Provider.Shutdown(ctx)
}

// PhaseTracer returns the tracer, or nil (tracing off) for a nil Tracing.
func (t *Tracing) PhaseTracer() PhaseTracer {
	if t == nil {
		return nil
	}
	return t.Tracer
}

// FromEnv configures tracing from the standard OpenTelemetry
// environment variables only:
//
//   - OTEL_SDK_DISABLED=true: off.
//   - OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT:
//     where to export; with neither set, tracing is off (nil, nil).
//   - OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL:
//     grpc or http/protobuf (the default, as the OTel specification says).
//   - OTEL_SERVICE_NAME (default "phasegang"), OTEL_RESOURCE_ATTRIBUTES,
//     and the exporters' own OTEL_EXPORTER_OTLP_* settings (headers,
//     timeout, insecure, certificates).
//
// Spans go through a batch span processor: call Shutdown on exit.
func FromEnv(ctx context.Context) (*Tracing, error) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, nil
	}
	if os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" {
		return nil, nil
	}
	proto := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp sdktrace.SpanExporter
	var err error
	switch proto {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: want grpc or http/protobuf", proto)
	}
	if err != nil {
		return nil, fmt.Errorf("creating the OTLP exporter: %w", err)
	}
	return New(ctx, exp)
}

// OTLPExporter returns an exporter for an explicit endpoint: an http:// or
// https:// URL exports OTLP/HTTP (to <url>/v1/traces when the URL has no
// path), a bare host:port exports OTLP/gRPC without TLS.
func OTLPExporter(ctx context.Context, endpoint string) (sdktrace.SpanExporter, error) {
	if strings.HasPrefix(endpoint, "http://") || strings.HasPrefix(endpoint, "https://") {
		u, err := url.Parse(endpoint)
		if err != nil {
			return nil, fmt.Errorf("OTLP endpoint %q: %w", endpoint, err)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		return otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(u.String()))
	}
	if strings.Contains(endpoint, "://") || !strings.Contains(endpoint, ":") {
		return nil, fmt.Errorf("OTLP endpoint %q: want host:port (gRPC) or an http(s):// URL (HTTP)", endpoint)
	}
	return otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithInsecure())
}

// New traces into exp through a batch span processor, with
// phasegang's resource (service.name from OTEL_SERVICE_NAME, default
// "phasegang").
func New(ctx context.Context, exp sdktrace.SpanExporter) (*Tracing, error) {
	res, err := Resource(ctx)
	if err != nil {
		return nil, err
	}
	tp := NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{Tracer: NewOTelTracer(tp), Provider: tp}, nil
}

// Resource describes the process: service.name "phasegang" unless
// OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) says otherwise.
func Resource(ctx context.Context) (*resource.Resource, error) {
	return resource.New(ctx,
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(semconv.ServiceName(DefaultServiceName)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
}
