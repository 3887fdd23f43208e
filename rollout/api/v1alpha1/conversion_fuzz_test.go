package v1alpha1

import (
	"testing"

	"sigs.k8s.io/randfill"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// randomizedRuns is the number of seeds each randomized round-trip test covers.
const randomizedRuns = 400

func addFuzzSeeds(f *testing.F) {
	for _, seed := range [][]byte{nil, []byte("rollout"), {0xff, 0x00, 0x7f, 0x10, 0x01}, []byte("blue-green canary partition 5% abc")} {
		f.Add(seed)
	}
}

func FuzzRolloutRoundTrip(f *testing.F) {
	addFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var hub rolloutsv1beta1.Rollout
		newFiller(randfill.NewFromGoFuzz(data)).Fill(&hub)
		hubRolloutRoundTrip(t, &hub)
	})
}

func FuzzRolloutSpokeRoundTrip(f *testing.F) {
	addFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var spoke Rollout
		newFiller(randfill.NewFromGoFuzz(data)).Fill(&spoke)
		spokeRolloutRoundTrip(t, &spoke)
	})
}

func FuzzBatchReleaseRoundTrip(f *testing.F) {
	addFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var hub rolloutsv1beta1.BatchRelease
		newFiller(randfill.NewFromGoFuzz(data)).Fill(&hub)
		hubBatchReleaseRoundTrip(t, &hub)
	})
}

func FuzzBatchReleaseSpokeRoundTrip(f *testing.F) {
	addFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var spoke BatchRelease
		newFiller(randfill.NewFromGoFuzz(data)).Fill(&spoke)
		spokeBatchReleaseRoundTrip(t, &spoke)
	})
}

// TestRandomizedRoundTrip runs the same round trips as the fuzz targets over fixed seeds, so that every
// `go test` covers a deterministic sample of random objects.
func TestRandomizedRoundTrip(t *testing.T) {
	for seed := int64(0); seed < randomizedRuns; seed++ {
		filler := newFiller(randfill.NewWithSeed(seed))

		var hubRollout rolloutsv1beta1.Rollout
		filler.Fill(&hubRollout)
		hubRolloutRoundTrip(t, &hubRollout)

		var spokeRollout Rollout
		filler.Fill(&spokeRollout)
		spokeRolloutRoundTrip(t, &spokeRollout)

		var hubBatchRelease rolloutsv1beta1.BatchRelease
		filler.Fill(&hubBatchRelease)
		hubBatchReleaseRoundTrip(t, &hubBatchRelease)

		var spokeBatchRelease BatchRelease
		filler.Fill(&spokeBatchRelease)
		spokeBatchReleaseRoundTrip(t, &spokeBatchRelease)
	}
}
