// Package model will hold the porcupine models of the Store contract: a
// sequential lease register (create-if-absent, read, compare-and-set,
// compare-and-delete) against which a trace's store operations are checked
// for linearizability. It is empty until the checker lands (issue 3).
package model
