//go:build tools

// Package jaeger pins the Jaeger all-in-one command (Jaeger v2: an
// OpenTelemetry Collector with an OTLP receiver, in-memory storage and the
// query API) that the traces suite exports to and reads traces back from.
package jaeger

import (
	_ "github.com/jaegertracing/jaeger/cmd/jaeger"
)
