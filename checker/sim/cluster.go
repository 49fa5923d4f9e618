package sim

import "github.com/handoffcheck/handoffcheck/checker/cluster"

// The cluster a run simulates, its workload and its fault plan are the
// cluster layer's, shared with the live run and the conformance judge;
// these names keep the simulator's own vocabulary for its callers.

type (
	Config      = cluster.Config
	PrefillPool = cluster.PrefillPool
	DecodePool  = cluster.DecodePool
	Timers      = cluster.Timers
	Router      = cluster.Router
	Request     = cluster.Request
	Source      = cluster.Source
	Fault       = cluster.Fault
)

// Disabled is the policy name of the mode without handoff.
const Disabled = cluster.Disabled

// The routers' selection policies.
const (
	LeastLoaded = cluster.LeastLoaded
	RoundRobin  = cluster.RoundRobin
	Random      = cluster.Random
	PowerOfTwo  = cluster.PowerOfTwo
	KVAware     = cluster.KVAware
)

var (
	// ErrConfig is wrapped by every refusal of a simulation configuration.
	ErrConfig = cluster.ErrConfig
	// ErrInput is wrapped by a workload request or fault the configuration
	// cannot run.
	ErrInput = cluster.ErrInput
)

// ConfigSchemaV1 names the JSON form of a simulation configuration.
const ConfigSchemaV1 = cluster.ConfigSchemaV1

// ParseConfig reads a simulation configuration.
func ParseConfig(file string, data []byte) (*Config, error) { return cluster.ParseConfig(file, data) }

// DefaultConfig is the configuration `simulate` runs without --config.
func DefaultConfig() *Config { return cluster.DefaultConfig() }

// DefaultConfigJSON is the embedded default configuration, as written.
func DefaultConfigJSON() []byte { return cluster.DefaultConfigJSON() }
