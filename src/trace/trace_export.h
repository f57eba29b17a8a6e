/*
 * trace/trace_export.h — turns the model of a traced run into files:
 * Chrome trace event JSON (ui.perfetto.dev, chrome://tracing), the
 * dependency graph as JSON and as Graphviz DOT (trace_export.c).
 *
 * Owns: the three writers. The model they write is trace_model.h's
 * (included here, so a caller that builds a model and writes it needs this
 * header alone). Must not touch a context or the device.
 */
#ifndef SIMPLER_TRACE_TRACE_EXPORT_H
#define SIMPLER_TRACE_TRACE_EXPORT_H

#include <stdio.h>

#include "trace/trace_model.h"

/* Writers: 0 or PTO_RUNTIME_ERR_INTERNAL when a write failed. */
int sp_trace_write_chrome(struct sp_trace_model *m, FILE *f); /* also counts its events */
int sp_trace_write_deps_json(struct sp_trace_model *m, FILE *f);
int sp_trace_write_deps_dot(struct sp_trace_model *m, FILE *f);

/* Writes all three next to `path` (the Chrome JSON at `path`; `<stem>.deps.json`
 * and `<stem>.deps.dot`, stem = path without a trailing ".json"). 0 or
 * INTERNAL (a file could not be written). */
int sp_trace_write_files(struct sp_trace_model *m, const char *path);

#endif /* SIMPLER_TRACE_TRACE_EXPORT_H */
