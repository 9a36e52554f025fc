// Package policysim is the retry-policy simulator behind `paygate simulate`: the gateway's own
// retry loop (retry.Run) on a fake clock, against scripted processor answers that the
// processor adapter classifies (processor.ClassifyWrite), for one operation or a population
// sharing one budget and breaker; it prints the timeline, JSON or an SVG. It needs no
// database and no network. The file format and the output are in docs/simulators.md.
package policysim
