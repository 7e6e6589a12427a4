/** The untyped optional peer `parse-prometheus-text-format`, as load-view/engine.ts uses it. */
declare module "parse-prometheus-text-format" {
  const parsePrometheusTextFormat: (text: string) => unknown[];
  export default parsePrometheusTextFormat;
}
