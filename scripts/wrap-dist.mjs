/**
 * After the build: esbuild writes a chunk's import and export lists on one line each, hundreds of
 * names long. Wrapped one name per line, every line of dist/ stays short enough to read in a
 * stack trace.
 */
import { readFile, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

for (const entry of await readdir("dist", { withFileTypes: true, recursive: true })) {
  if (!entry.isFile() || !/\.c?js$/.test(entry.name)) continue;
  const file = join(entry.parentPath, entry.name);
  const text = await readFile(file, "utf8");
  const wrapped = text.replace(/^(import|export) \{ ([^}\n]{300,}) \}(.*)$/gm, (_, kw, names, rest) =>
    `${kw} {\n${names.split(", ").map((n) => `  ${n},`).join("\n")}\n}${rest}`,
  );
  if (wrapped !== text) await writeFile(file, wrapped);
}
