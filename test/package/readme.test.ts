/**
 * The README is read on npm's page, where only the package's files exist: every link is absolute,
 * an anchor of the README itself, or a file in the package. Links into this repository name a
 * file that exists, and an anchor that one of its headings makes.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./install.js";
import { anchors } from "./markdown-anchors.js";

const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { repository: { url: string }; files: string[] };
const REPO = manifest.repository.url.replace(/^git\+/, "").replace(/\.git$/, "");

/** Link targets of markdown links and reference definitions, outside code. */
function links(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "");
  return [...prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g), ...prose.matchAll(/^\[[^\]]+\]:\s*(\S+)/gm)].map((m) => m[1]!);
}

describe("README links", () => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");

  it("resolve from the npm page: absolute, a README anchor, or a file in the package", () => {
    const own = anchors(readme);
    const broken = links(readme).filter((link) => {
      if (/^https?:\/\//.test(link)) return false;
      if (link.startsWith("#")) return !own.has(link.slice(1));
      const path = link.split("#")[0]!;
      return !manifest.files.some((f) => path === f || path.startsWith(`${f}/`));
    });
    expect(broken).toEqual([]);
  });

  it("into this repository, name files that exist and anchors their headings make", () => {
    const broken = links(readme).filter((link) => {
      const m = new RegExp(`^${REPO.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/(?:blob|tree)/main/([^#]+)(?:#(.+))?$`).exec(link);
      if (m === null) return false;
      const file = join(ROOT, m[1]!);
      if (!existsSync(file)) return true;
      return m[2] !== undefined && !anchors(readFileSync(file, "utf8")).has(m[2]);
    });
    expect(broken).toEqual([]);
    expect(links(readme).some((l) => l.startsWith(`${REPO}/blob/main/docs/`))).toBe(true);
  });
});
