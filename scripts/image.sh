#!/usr/bin/env bash
# Builds the shardgate container image: a static binary (CGO_ENABLED=0) in
# an image FROM scratch. No base image is pulled: the build context holds
# only the binary, docker/Dockerfile and an empty data directory.
#
# Usage: scripts/image.sh [TAG]      (default: $SHARDGATE_IMAGE or shardgate:latest)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

tag=${1:-${SHARDGATE_IMAGE:-shardgate:latest}}
if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
	export PATH=$PATH:/usr/local/go/bin
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT

echo "image: building the static binary" >&2
CGO_ENABLED=0 go build -ldflags='-s -w' -o "$ctx/shardgate" ./cmd/shardgate
mkdir "$ctx/data"
cp docker/Dockerfile "$ctx/Dockerfile"

echo "image: docker build -t $tag" >&2
docker build --quiet -t "$tag" "$ctx" >/dev/null
echo "$tag"
