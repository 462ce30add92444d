# Convenience targets; the real work is in scripts/ and go's own tooling.

.PHONY: build image test

# build: the binary for this machine, in bin/.
build:
	go build -o bin/shardgate ./cmd/shardgate

# image: the container image shardgate:latest (FROM scratch around a
# static binary; see scripts/image.sh). IMAGE=name:tag to choose the tag.
IMAGE ?= shardgate:latest
image:
	scripts/image.sh $(IMAGE)

test:
	go test ./...
