package janitor

import (
	"testing"

	"github.com/paygate/paygate/internal/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }
