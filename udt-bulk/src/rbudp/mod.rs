//! Reliable Blast UDP, wire-compatible with QUANTA RBUDP 1.0 (`sendfile`, `recvfile`).
