"""The AG-UI protocol as the inbox reads it, below every capability package: ingest, resumes and conformance
all read runs through ``parser``, which knows no model and touches no database."""
