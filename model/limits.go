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
