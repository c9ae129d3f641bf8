//! Tsunami UDP 1.1 (protocol revision 0x20061025), wire-compatible with `tsunamid` and `tsunami`.
