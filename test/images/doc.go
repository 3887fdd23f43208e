// Package images builds OCI images without a container engine: one layer of static Go binaries on an empty
// base, a config with entrypoint, user and labels, written as an OCI image layout archive (a tar holding
// oci-layout, index.json and blobs/) that `ctr image import`, `docker load`, skopeo's oci-archive transport
// and go-containerregistry read. The same inputs give the same bytes, so the same digest: file times, owners
// and the image's creation time are fixed (the last commit's time), and binaries are built with -trimpath.
//
// `make images` builds flotilla-manager and flotilla-nodeagent this way (cmd/images); the real node of
// test/cluster runs the pause image built here, and tests run the test application (testapp/).
package images
