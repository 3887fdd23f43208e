package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// maxRequestLines bounds the request breakdown printed per scenario; the
// JSON has all of them.
const maxRequestLines = 8

// RenderTable writes the results as a table of metrics, followed by the
// manager's API requests of each measured phase.
func RenderTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tMETRIC\tVALUE\tBASELINE\tRATIO\tTARGET\tNOTE")
	for _, r := range results {
		for i, row := range resultRows(r) {
			name := ""
			if i == 0 {
				name = r.Scenario
			}
			fmt.Fprintf(tw, "%s\t%s\n", name, strings.Join(row, "\t"))
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	return renderRequests(w, results)
}

// resultRows are the rows of one scenario: the measured phase's wall
// time, its metrics, and its error if it failed.
func resultRows(r Result) [][]string {
	rows := [][]string{{"measured phase", FormatValue(UnitSeconds, r.WallSeconds), "", "", "", fmt.Sprintf("scenario %s in total", FormatValue(UnitSeconds, r.TotalSeconds))}}
	for _, m := range r.Metrics {
		rows = append(rows, metricRow(m))
	}
	if r.Error != "" {
		rows = append(rows, []string{"ERROR", "", "", "", "", firstLine(r.Error)})
	}
	return rows
}

func metricRow(m Metric) []string {
	row := []string{m.Name, FormatValue(m.Unit, m.Value), "", "", formatTarget(m), m.Note}
	if m.Baseline != nil {
		row[2] = FormatValue(m.Unit, *m.Baseline)
		if m.BaselineName != "" {
			row[2] += " (" + m.BaselineName + ")"
		}
	}
	if m.Ratio != nil {
		row[3] = fmt.Sprintf("%.3gx", *m.Ratio)
	}
	return row
}

func formatTarget(m Metric) string {
	return targetCell(m, "<=", "x", " ok", " MISSED")
}

// targetCell writes a metric's target with the signs and verdicts of a format, "" without one.
func targetCell(m Metric, atMost, times, met, missed string) string {
	if m.Target == nil {
		return ""
	}
	limit := atMost + " " + FormatValue(m.Unit, m.Target.Max)
	if m.Target.OnRatio {
		limit = fmt.Sprintf("%s %.3g%s", atMost, m.Target.Max, times)
	}
	if m.Met != nil && *m.Met {
		return limit + met
	}
	return limit + missed
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func renderRequests(w io.Writer, results []Result) error {
	for _, r := range results {
		for _, part := range []struct {
			when     string
			requests []RequestCount
		}{{"before the measured phase", r.SetupRequests}, {"in the measured phase", r.APIRequests}} {
			if len(part.requests) == 0 {
				continue
			}
			if _, err := fmt.Fprintf(w, "%s: manager requests %s: %s\n", r.Scenario, part.when, requestList(part.requests)); err != nil {
				return fmt.Errorf("writing the table: %w", err)
			}
		}
	}
	return nil
}

// requestList names the most frequent requests first, up to maxRequestLines.
func requestList(requests []RequestCount) string {
	parts := make([]string, 0, maxRequestLines+1)
	for i, rc := range requests {
		if i == maxRequestLines {
			parts = append(parts, fmt.Sprintf("... %d more", len(requests)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s %d", rc.Verb, rc.Resource, rc.Count))
	}
	return strings.Join(parts, ", ")
}

// FormatValue renders a value in its unit for reading: bytes in MiB,
// seconds below one in milliseconds, cores as a percentage of one core.
func FormatValue(unit string, v float64) string {
	switch unit {
	case UnitSeconds:
		if v < 1 {
			return fmt.Sprintf("%.1f ms", v*1000)
		}
		return fmt.Sprintf("%.1f s", v)
	case UnitMilliseconds:
		return fmt.Sprintf("%.2f ms", v)
	case UnitBytes:
		return formatBytes(v)
	case UnitCores:
		return fmt.Sprintf("%.2f%% core", v*100)
	case UnitCount:
		return fmt.Sprintf("%.0f", v)
	case UnitNsPerOp:
		return formatNanos(v) + "/op"
	case UnitPerPod, UnitPerNode, UnitPerRollout, UnitPerNamespace:
		return formatRate(v) + " " + unit
	}
	return strings.TrimSpace(fmt.Sprintf("%g %s", v, unit))
}

// formatRate shows two decimals, three below 0.1, where a target such as 0.05 writes per pod lies.
func formatRate(v float64) string {
	if v != 0 && math.Abs(v) < 0.1 {
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func formatBytes(v float64) string {
	switch {
	case v >= 1<<20:
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	case v >= 1<<10:
		return fmt.Sprintf("%.1f KiB", v/(1<<10))
	}
	return fmt.Sprintf("%.0f B", v)
}

func formatNanos(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2f ms", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.2f µs", v/1e3)
	}
	return fmt.Sprintf("%.0f ns", v)
}

// RenderMarkdown writes the results as the Markdown table of docs/performance.md: one row per metric, the
// scenario named on its first, targets marked met or **missed**.
func RenderMarkdown(w io.Writer, results []Result) error {
	var b strings.Builder
	b.WriteString("| scenario | metric | value | baseline | ratio | target |\n|---|---|---|---|---|---|\n")
	for _, r := range results {
		for i, m := range r.Metrics {
			name := ""
			if i == 0 {
				name = r.Scenario
			}
			row := metricRow(m)
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", name, row[0], row[1], row[2], markdownRatio(m), markdownTarget(m))
		}
		if r.Error != "" {
			fmt.Fprintf(&b, "| %s | ERROR: %s |  |  |  |  |\n", r.Scenario, firstLine(r.Error))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func markdownRatio(m Metric) string {
	if m.Ratio == nil {
		return ""
	}
	return fmt.Sprintf("%.3g×", *m.Ratio)
}

func markdownTarget(m Metric) string {
	return targetCell(m, "≤", "×", ": met", ": **missed**")
}
