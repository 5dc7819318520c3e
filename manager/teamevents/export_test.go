package teamevents

import "k8s.io/utils/clock"

// SetSessionsClock lets a test move the sessions' back-off clock.
func SetSessionsClock(s *Sessions, c clock.PassiveClock) { s.clock = c }
