/**
 * What the tools' HTML reports share: optional packages loaded with a typed error, Vega-Lite
 * charts rendered to SVG, the page style, escaping and tables.
 */
import { importOptional } from "./optional.js";

/** A vega-lite specification (kept structural so the types do not require vega-lite). */
export type ChartSpec = Record<string, unknown>;

/** Renders one vega-lite spec to an SVG string, headlessly. */
export type SvgRenderer = (spec: ChartSpec) => Promise<string>;

/**
 * Loads vega and vega-lite and returns a renderer.
 * @throws {BenchError} `ERR_MISSING_PACKAGE` naming the package that is not installed
 */
export async function loadSvgRenderer(): Promise<SvgRenderer> {
  const vega = await importOptional<typeof import("vega")>("vega", () => import("vega"));
  const vl = await importOptional<typeof import("vega-lite")>("vega-lite", () => import("vega-lite"));
  return async (spec) => {
    const compiled = vl.compile(spec as unknown as Parameters<typeof vl.compile>[0]).spec;
    const view = new vega.View(vega.parse(compiled), { renderer: "none" });
    try {
      return await view.toSVG();
    } finally {
      view.finalize();
    }
  };
}

/** `s` with the characters HTML treats specially escaped. */
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The style sheet of the HTML reports. */
export const REPORT_STYLE = `body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}.charts{display:flex;flex-wrap:wrap;gap:1em}figure{margin:0}`;

/** An HTML table of escaped cells. */
export function htmlTable(header: readonly string[], body: readonly (readonly string[])[]): string {
  const th = header.map((h) => `<th>${escapeHtml(h)}</th>`).join("");
  const trs = body.map((r) => `<tr>${r.map((c) => `<td>${escapeHtml(c)}</td>`).join("")}</tr>`).join("\n");
  return `<table><thead><tr>${th}</tr></thead><tbody>\n${trs}\n</tbody></table>`;
}
