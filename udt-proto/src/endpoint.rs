//! Listener side of the handshake and socket-id routing (placeholder).
