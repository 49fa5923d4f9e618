package cluster

import (
	"fmt"

	"github.com/handoffcheck/handoffcheck/checker/system"
)

// Checker is the composed system that steps the attempts' windows of a
// run of the configuration: the tables of p, every fault enabled so that
// an adapter may take any fault its plan or its world brings.
func (c *Config) Checker(p *system.Protocol) (*system.System, error) {
	tmpl := c.AttemptWorld(1, 0)
	budget := system.Budget{}
	for f := range budget {
		budget[f] = system.MaxBudget
	}
	chk, err := system.New(p, &system.Config{World: *tmpl, Budget: budget, Renewal: c.Renewal, Commands: c.Commands, Judge: c.Judge},
		system.Run{Name: "simulate", Policy: c.policy, Engine: c.Engine})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return chk, nil
}
