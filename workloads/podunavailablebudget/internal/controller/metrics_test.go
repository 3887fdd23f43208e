package controller

import (
	"errors"
	"testing"

	"github.com/flotilla-dev/flotilla/test/managertest"
)

func TestCountMarked(t *testing.T) {
	marked := func(result string) float64 {
		return managertest.Counter(t, MarkedPodsName, map[string]string{"result": result})
	}
	ok, failed := marked("success"), marked("failure")
	countMarked(nil)
	countMarked(errors.New("forbidden"))
	if marked("success") != ok+1 || marked("failure") != failed+1 {
		t.Errorf("success %v (was %v), failure %v (was %v)", marked("success"), ok, marked("failure"), failed)
	}
}
