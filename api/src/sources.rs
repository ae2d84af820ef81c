//! The live site's sources (the render keys handlers name when they re-render) and the
//! service's clock: what handlers and the dispatcher both use, importing neither.

use conduct_renderer::live::SourceId;

/// The vows, the live site's first source of change.
pub const VOWS: SourceId = SourceId(0);
/// The registry source's id (the second source).
pub const REGISTRY: SourceId = SourceId(1);
/// The quest board's source id (the third source).
pub const MUNUS: SourceId = SourceId(2);
/// The reputation record's source id (the fourth source).
pub const REPUTATION: SourceId = SourceId(3);
/// The familiars' source id (the fifth source).
pub const FAMILIARS: SourceId = SourceId(4);

/// The service's clock (ARCHITECTURE.md, "The two clocks").
pub use conduct_indexer::clock::service_now;
