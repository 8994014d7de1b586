//go:build !linux

package main

// shedImage does nothing outside Linux.
func shedImage() {}
