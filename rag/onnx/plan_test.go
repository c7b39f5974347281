package onnx

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPlan(t *testing.T) {
	tests := []struct {
		name      string
		lens      []int
		rows, tok int
		skip      func(int) bool
		want      [][]int
	}{
		{"sorted and packed", []int{10, 3, 5, 3}, 8, 20, nil, [][]int{{1, 3, 2}, {0}}},
		{"row cap", []int{1, 1, 1}, 2, 100, nil, [][]int{{0, 1}, {2}}},
		{"long alone", []int{300, 2}, 8, 256, nil, [][]int{{1}, {0}}},
		{"skip", []int{4, 4, 4}, 8, 100, func(i int) bool { return i == 1 }, [][]int{{0, 2}}},
		{"empty", nil, 8, 100, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, plan(tt.lens, tt.rows, tt.tok, tt.skip)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}
