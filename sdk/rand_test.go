package sdk_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/aishield/aishield/sdk"
)

// TestRandReproducible: with Options.Rand from the same seed, two guards
// give the same exchange IDs and the same placeholders (what makes the demo
// reproducible); with crypto/rand they differ.
func TestRandReproducible(t *testing.T) {
	req := sdk.Request{URL: "https://api.openai.com/v1/chat/completions", Body: chatBody("Write to " + email)}
	check := func(g *sdk.Guard) (string, string) {
		x, err := g.Check(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return x.ID, string(x.Body)
	}
	seeded := func() *sdk.Guard { return newGuard(t, sdk.Options{Rand: rand.NewChaCha8([32]byte{7})}) }
	a, b := seeded(), seeded()
	for range 3 {
		idA, bodyA := check(a)
		idB, bodyB := check(b)
		if idA != idB || bodyA != bodyB {
			t.Fatalf("same seed, different exchanges: %s %s / %s %s", idA, bodyA, idB, bodyB)
		}
		if !placeholderRE.MatchString(bodyA) {
			t.Fatalf("no placeholder in %s", bodyA)
		}
	}
	idC, bodyC := check(newGuard(t, sdk.Options{}))
	idD, bodyD := check(newGuard(t, sdk.Options{}))
	if idC == idD || bodyC == bodyD {
		t.Fatal("crypto/rand guards gave the same exchange")
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("entropy source gone") }

// TestRandFailure: a failing Options.Rand refuses the request with a
// GuardError at stage "random", even when the policy fails open.
func TestRandFailure(t *testing.T) {
	for _, mode := range []string{"closed", "open"} {
		g := newGuard(t, sdk.Options{Policy: testPolicyMode(t, mode), Rand: failingReader{}})
		x, err := g.Check(context.Background(), sdk.Request{URL: "https://api.openai.com/v1/chat/completions", Body: chatBody("hello")})
		var ge *sdk.GuardError
		if x != nil || !errors.As(err, &ge) || ge.Stage != "random" {
			t.Fatalf("%s: exchange %v, error %v", mode, x, err)
		}
	}
}
