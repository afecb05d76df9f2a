// Package realnode holds the programs that run inside pods on the real node
// of test/cluster (realnode.sh): the trainer, a stand-in for a synchronous
// data-parallel worker, and pause, the sandbox image's process.
// test/cluster/build-node.sh builds each into an image without Docker
// (hack/image -test) and loads it into the node's containerd.
package realnode
