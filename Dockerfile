# syntax=docker/dockerfile:1
# phasegang's controller image, for people with Docker (or BuildKit):
#
#   docker build --build-arg VERSION=v0.1.0 -t ghcr.io/phasegang/phasegang:v0.1.0 .
#
# Without a Docker engine, `make image` builds the same image (same binary
# flags, path, entrypoint, user and labels) into bin/phasegang-image.tar;
# hack/image's test keeps the two in step.
ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS=linux
ARG TARGETARCH
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static (no cgo: distroless static has no libc), reproducible, stripped.
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/phasegang ./cmd/phasegang

# distroless static:nonroot: CA certificates, tzdata, /etc/passwd with
# nonroot (65532), no shell.
FROM gcr.io/distroless/static:nonroot
ARG VERSION=dev
ARG REVISION=
LABEL org.opencontainers.image.title="phasegang" \
      org.opencontainers.image.description="Gang scheduling controller for multi-phase ML pipelines (PhasedTraining)" \
      org.opencontainers.image.source="https://github.com/phasegang/phasegang" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY --from=build /out/phasegang /phasegang
# Numeric, so the kubelet can enforce runAsNonRoot.
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/phasegang", "controller"]
