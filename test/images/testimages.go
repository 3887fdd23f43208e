package images

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
)

// Test images live under the reserved .test domain: no registry answers for it, so a node never pulls them
// from anywhere; they must have been imported.
const (
	// PauseImage is the pod sandbox image of the real node.
	PauseImage = "flotilla.test/pause:v1"
	// TestAppRepository is the test application's repository; its tags are versions (TestAppImage).
	TestAppRepository = "flotilla.test/testapp"
	pausePackage      = "./test/images/pause"
	testAppPackage    = "./test/images/testapp"
)

// TestAppImage is the test application's image of version (e.g. "v1"): the same binary for every version,
// with VERSION=<version> in its environment, so versions differ in digest and in what the app answers.
func TestAppImage(version string) string { return TestAppRepository + ":" + version }

// testCreated dates the test images; any fixed time keeps their digests stable.
var testCreated = time.Unix(0, 0).UTC()

// BuildPause compiles the pause program from the module at root and writes its archive into dir.
func BuildPause(ctx context.Context, root, dir string) (Result, error) {
	bin := filepath.Join(dir, "pause")
	if err := GoBuild(ctx, root, pausePackage, bin, ""); err != nil {
		return Result{}, err
	}
	defer os.Remove(bin)
	img, err := Build(Spec{Files: []File{{Path: "/pause", Source: bin}}, Entrypoint: []string{"/pause"},
		User: "65535:65535", Created: testCreated})
	if err != nil {
		return Result{}, err
	}
	return writeResult(name.MustParseReference(PauseImage).(name.Tag), img, filepath.Join(dir, "pause.tar"))
}

// BuildTestApp compiles the test application once and writes one archive per version into dir.
func BuildTestApp(ctx context.Context, root, dir string, versions ...string) ([]Result, error) {
	bin := filepath.Join(dir, "testapp")
	if err := GoBuild(ctx, root, testAppPackage, bin, ""); err != nil {
		return nil, err
	}
	defer os.Remove(bin)
	results := make([]Result, 0, len(versions))
	for _, v := range versions {
		ref, err := name.NewTag(TestAppImage(v))
		if err != nil {
			return nil, err
		}
		img, err := Build(Spec{Files: []File{{Path: "/testapp", Source: bin}}, Entrypoint: []string{"/testapp"},
			Env: []string{"VERSION=" + v}, Created: testCreated})
		if err != nil {
			return nil, err
		}
		r, err := writeResult(ref, img, filepath.Join(dir, "testapp-"+v+".tar"))
		if err != nil {
			return nil, err
		}
		results = append(results, r)
	}
	return results, nil
}
