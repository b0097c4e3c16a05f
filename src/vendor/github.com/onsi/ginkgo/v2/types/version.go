package types

const VERSION = "2.31.0"
