"""Memory that curates itself: the write filter, secret detection, and (later) near-duplicates, priors,
archive, consolidation and context assembly. See DESIGN.md's lifecycle section."""
