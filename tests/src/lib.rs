//! End-to-end test support: spawns the real `conduct` binary.
