# One controller image per build:
#   docker build --build-arg CONTROLLER=volume   -t <registry>/valkey-operator/volume-controller:<tag> .
#   docker build --build-arg CONTROLLER=workload -t <registry>/valkey-operator/workload-controller:<tag> .
#   docker build --build-arg CONTROLLER=topology -t <registry>/valkey-operator/topology-controller:<tag> .
# (The local test cluster builds the same binaries into images without Docker: test/images.)
FROM golang:1.26 AS build
ARG CONTROLLER
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY apis/ apis/
COPY cmd/ cmd/
COPY internal/ internal/
COPY volumecontroller/ volumecontroller/
COPY workloadcontroller/ workloadcontroller/
COPY topologycontroller/ topologycontroller/
RUN test -n "$CONTROLLER" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/manager ./cmd/${CONTROLLER}-controller
# valkey-start: the Valkey pods' entrypoint, copied from the workload controller's image.
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/valkey-start ./cmd/valkey-start

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/manager /usr/local/bin/manager
COPY --from=build /out/valkey-start /usr/local/bin/valkey-start
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/manager"]
