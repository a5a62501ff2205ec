# syntax=docker/dockerfile:1
#
# The aishield CLI in a distroless image, running as a non-root user.
#
#   docker build --build-arg VERSION="$(git describe --tags --always --dirty)" -t aishield .
#   docker run --rm aishield version
#
# docs/install.md shows how to run the proxy and the cache server from it.
# cmd/aishield/dockerfile_test.go lints this file and runs its go build line.

FROM golang:1.26-bookworm AS build
WORKDIR /src
# Modules first, so that a code change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The version printed by `aishield version` and `aishield --version`.
ARG VERSION
ENV CGO_ENABLED=0
RUN go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" -o /out/aishield ./cmd/aishield

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/aishield /usr/local/bin/aishield
USER nonroot:nonroot
# The proxy's port (aishield proxy --listen 0.0.0.0:8787 in a container).
EXPOSE 8787
ENTRYPOINT ["/usr/local/bin/aishield"]
CMD ["--help"]
