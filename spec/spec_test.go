package spec

import (
	"testing"
)

func TestDefault_Validates(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
}
