package model

// Limits of one worker. Worlds are fixed-size packed values (pack.go): a
// worker's block counts (cached, background) are packed in one byte each,
// and its request slots are counted in four bits.
const (
	// MaxCapacityBlocks bounds a worker's capacity_blocks: 250. Block
	// counts are packed in one byte; the margin below 255 keeps a
	// transient count from wrapping before an invariant reports it.
	MaxCapacityBlocks Blocks = 250
	// MaxSlots bounds a decode worker's slots and background_slots: 15.
	MaxSlots = 15
)

// Limits of one worker of a simulated world (Config.Unbounded), which is
// never packed: only the counters' types bound it.
const (
	// MaxSimCapacityBlocks bounds a simulated worker's capacity_blocks.
	MaxSimCapacityBlocks Blocks = 1 << 28
	// MaxSimSlots bounds a simulated decode worker's slots (int16 counters).
	MaxSimSlots = 1 << 14
)
