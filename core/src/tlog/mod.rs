//! The ledger's transparency log logic (library/VOWS.md, library/MIRRORS.md): RFC 6962 hashing and proofs,
//! C2SP tlog-tiles, signed-note, tlog-checkpoint and tlog-proof.
//!
//! Pure functions and types: no IO, no clock. Storage, serving and scheduling live elsewhere.

pub mod checkpoint;
pub mod edge;
pub mod hash;
pub mod note;
pub mod proof;
pub mod tiles;
pub mod tlog_proof;

pub use checkpoint::{open_checkpoint, Checkpoint, CheckpointError, SignedCheckpoint};
pub use edge::{edge_root, edge_spans, push_edge, EdgeSpan};
pub use hash::{empty_root, leaf_hash, node_hash, root, Hash};
pub use note::{
    is_valid_key_name, open_note, sign_note, Note, NoteError, NoteSignature, Verification,
    Verifier, ALG_ED25519, MAX_SIGNATURES,
};
pub use proof::{
    consistency_proof, inclusion_proof, root_from_inclusion_proof, verify_consistency,
    verify_inclusion, ProofError,
};
pub use tiles::{
    build_tiles, decode_bundle, encode_bundle, entries_path, new_tiles, parse_entries_path,
    parse_tile_path, root_from_tiles, stored_hash_count, tile_data, tile_path, tiles_for_size,
    BundleError, Tile, TileHashReader, TileReadError, MAX_ENTRY_LEN, TILE_HEIGHT, TILE_WIDTH,
};
pub use tlog_proof::{TlogProof, TlogProofError, TLOG_PROOF_HEADER};
