import Foundation

/// The console's charts: stacked bars drawn as inline SVG on the server, so the pages stay script-free. Each bar
/// segment carries a `<title>` (the browser's tooltip), and each chart a legend with the window's totals; the
/// numbers are also in a table below the chart.
enum ConsoleChart {
    /// One stacked part of every bar.
    struct Series {
        var name: String
        /// The CSS class of its legend entry and `data-series` of its rectangles.
        var key: String
        var color: String
        /// One value per bar.
        var values: [Int]
    }

    static let width = 640.0
    static let height = 170.0
    private static let left = 44.0
    private static let bottom = 22.0
    private static let top = 8.0

    /// Bars of `series` stacked per label, scaled to the highest stack.
    static func bars(id: String, title: String, labels: [String], series: [Series]) -> String {
        let count = labels.count
        let totals = (0..<count).map { index in series.reduce(0) { $0 + ($1.values.indices.contains(index) ? $1.values[index] : 0) } }
        let scale = niceCeiling(totals.max() ?? 0)
        let plotWidth = width - left - 6
        let plotHeight = height - bottom - top
        let slot = plotWidth / Double(max(count, 1))
        let barWidth = max(1, slot * 0.72)
        var parts: [String] = []
        for fraction in [0.0, 0.5, 1.0] {
            let y = top + plotHeight * (1 - fraction)
            let value = Int((Double(scale) * fraction).rounded())
            parts.append(
                ##"<line x1="\##(format(left))" x2="\##(format(width - 6))" y1="\##(format(y))" y2="\##(format(y))" stroke="#e5e7eb"/>"##
                    + #"<text x="\#(format(left - 6))" y="\#(format(y + 4))" text-anchor="end">\#(value)</text>"#)
        }
        let every = max(1, count / 6)
        for index in 0..<count {
            let x = left + slot * Double(index) + (slot - barWidth) / 2
            var base = top + plotHeight
            for part in series {
                let value = part.values.indices.contains(index) ? part.values[index] : 0
                guard value > 0 else { continue }
                let barHeight = plotHeight * Double(value) / Double(scale)
                base -= barHeight
                parts.append(
                    #"<rect data-series="\#(part.key)" x="\#(format(x))" y="\#(format(base))" width="\#(format(barWidth))" "#
                        + #"height="\#(format(barHeight))" fill="\#(part.color)"><title>\#(ConsolePage.escape(labels[index])) "#
                        + #"\#(ConsolePage.escape(part.name)): \#(value)</title></rect>"#)
            }
            if index % every == 0 {
                parts.append(
                    #"<text x="\#(format(x + barWidth / 2))" y="\#(format(height - 6))" text-anchor="middle">\#(ConsolePage.escape(labels[index]))</text>"#
                )
            }
        }
        let legend = series.map { part in
            let total = part.values.reduce(0, +)
            return #"<li class="\#(part.key)"><span style="background:\#(part.color)"></span>\#(ConsolePage.escape(part.name)) "#
                + #"<strong>\#(total)</strong></li>"#
        }
        return """
            <figure class="chart" id="\(id)"><svg viewBox="0 0 \(format(width)) \(format(height))" role="img" \
            aria-label="\(ConsolePage.escape(title))" font-size="11" fill="#6b7280">\(parts.joined())</svg>\
            <figcaption><ul class="legend">\(legend.joined())</ul></figcaption></figure>
            """
    }

    /// The smallest of 1, 2 or 5 times a power of ten at or above `value` (at least 1): a scale whose gridlines read
    /// as round numbers.
    static func niceCeiling(_ value: Int) -> Int {
        guard value > 1 else { return 1 }
        var power = 1
        while true {
            for step in [1, 2, 5] where step * power >= value { return step * power }
            power *= 10
        }
    }

    private static func format(_ value: Double) -> String { String(format: "%.1f", value) }

    /// The charts' styles, for the pages that show them.
    static let style = """
        figure.chart{margin:0 0 12px;background:#fff;border:1px solid #e5e7eb;border-radius:8px;padding:8px 10px;max-width:680px}
        figure.chart svg{display:block;width:100%;height:auto} ul.legend{display:flex;flex-wrap:wrap;gap:4px 16px;list-style:none;margin:6px 0 0;padding:0;font-size:13px}
        ul.legend span{display:inline-block;width:10px;height:10px;border-radius:2px;margin-inline-end:6px}
        .health td.warn{color:#b91c1c;font-weight:600} details{margin:0 0 12px} summary{cursor:pointer;color:#2563eb;font-size:14px}
        """
}
