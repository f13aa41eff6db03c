"""Glue for libraries that pick a device by themselves and know no PrivateUse1 device yet: contribution-shaped
code through the libraries' public extension points, never a patch of them (docs/ecosystem.md)."""
