"""Python op classes of tessel's dialects, generated from their ODS."""
