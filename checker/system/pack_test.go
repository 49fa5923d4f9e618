package system

import "testing"

// Packing keeps only independent facts and recomputes every counter on
// unpacking; if a counter kept live by the operations ever drifted from
// what the handoffs hold, the round trip would not give the state back.
// Random walks over a configuration with every fault check it on every
// state they reach.
func TestPack_RoundTripsEveryReachedState(t *testing.T) {
	cfg := mustConfig(t, twoByTwo)
	cfg.Budget = Budget{duplicate: 2, loss: 2, reorder: 2, Cancel: 2, abort: 2, transferFailure: 2, Restart: 2, earlyTimer: 3, noShow: 1, backgroundLoad: 2}
	cfg.World.Workers[1].BackgroundBlocks, cfg.World.Workers[1].BackgroundSlots = 1, 1
	cfg.World.Workers[2].BackgroundBlocks, cfg.World.Workers[2].BackgroundSlots = 1, 1
	checked := 0
	for _, run := range cfg.Runs {
		c, err := New(Generated(), cfg, run)
		if err != nil {
			t.Fatal(err)
		}
		for seed := uint64(0); seed < 300; seed++ {
			s := c.Initial()
			rng := seed*2654435761 + 1
			for step := 0; step < 60; step++ {
				moves := c.MovesInto(&s, nil)
				if len(moves) == 0 {
					break
				}
				rng = rng*6364136223846793005 + 1442695040888963407
				if _, _, err := c.Step(&s, moves[int(rng>>33)%len(moves)], nil); err != nil {
					t.Fatal(err)
				}
				var k Key
				c.pack(&s, &k)
				var back State
				c.UnpackTo(&k, &back)
				if back != s {
					t.Fatalf("%s seed %d step %d: unpack(pack(s)) differs from s:\n%v\n%v", run.Name, seed, step, c.DescribeState(&s), c.DescribeState(&back))
				}
				checked++
			}
		}
	}
	t.Logf("%d reached states round-trip", checked)
}
