//! The live site's sources (the render keys handlers name when they re-render) and the
//! service's clock: what handlers and the dispatcher both use, importing neither.

use conduct_renderer::live::familiar::FamiliarSource;
use conduct_renderer::live::munus::MunusSource;
use conduct_renderer::live::registry::RegistrySource;
use conduct_renderer::live::reputation::ReputationSource;
use conduct_renderer::live::vows::VowSource;
use conduct_renderer::live::SourceId;

/// The vows (`conduct_renderer::live::VowSource`).
pub const VOWS: SourceId = SourceId(VowSource::NAME);
/// The ERC-8257 registry view.
pub const REGISTRY: SourceId = SourceId(RegistrySource::NAME);
/// The quest board.
pub const MUNUS: SourceId = SourceId(MunusSource::NAME);
/// The reputation record.
pub const REPUTATION: SourceId = SourceId(ReputationSource::NAME);
/// The familiars.
pub const FAMILIARS: SourceId = SourceId(FamiliarSource::NAME);

/// The service's clock (ARCHITECTURE.md, "The two clocks").
pub use conduct_indexer::clock::service_now;
