import { createHash } from "node:crypto";

/**
 * GET /docs: a self-contained page that renders /openapi.json in the browser — no CDN, no bundle, nothing
 * fetched but the document itself, so it works offline and behind any firewall. Each operation shows its
 * parameters, request body and responses (schemas as JSON, folded).
 */
export const docsPageHtml = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>won-gateway API</title>
<style>
  body { font: 15px/1.5 system-ui, sans-serif; margin: 0 auto; max-width: 60rem; padding: 1rem 1.5rem 4rem; color: #1d1d1f; }
  h2 { margin-top: 2.5rem; border-bottom: 1px solid #ddd; text-transform: capitalize; }
  details.operation { border: 1px solid #ddd; border-radius: 6px; margin: .5rem 0; }
  details.operation > summary { cursor: pointer; padding: .4rem .6rem; list-style: none; }
  .method { display: inline-block; min-width: 4.5rem; font-weight: 700; text-transform: uppercase; font-family: ui-monospace, monospace; }
  .get { color: #0a7d32 } .post { color: #0b5cad } .put { color: #a15c00 } .patch { color: #6b3fa0 } .delete { color: #b3261e }
  code, pre { font-family: ui-monospace, monospace; font-size: 13px; }
  pre { background: #f6f8fa; padding: .6rem; overflow: auto; border-radius: 4px; }
  .body { padding: 0 .8rem .6rem; }
  table { border-collapse: collapse; } td, th { text-align: left; padding: .15rem .6rem .15rem 0; vertical-align: top; }
</style>
</head>
<body>
<h1 id="title">won-gateway API</h1>
<p id="description"></p>
<p><a href="/openapi.json">openapi.json</a></p>
<main id="operations">Loading…</main>
<script>
const element = (tag, properties = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), properties);
  for (const child of children) node.append(child);
  return node;
};
// The document's prose marks names with backticks (markdown): shown as code, never as literal backticks.
const backtick = String.fromCharCode(96);
const prose = (text) =>
  String(text ?? "").split(backtick).map((part, index) => (index % 2 === 1 ? element("code", { textContent: part }) : part));
const schemaBlock = (label, schema) =>
  element("details", {}, element("summary", {}, ...prose(label)), element("pre", { textContent: JSON.stringify(schema, null, 2) }));
fetch("/openapi.json").then((response) => response.json()).then((document_) => {
  document.getElementById("title").textContent = document_.info.title + " " + document_.info.version;
  document.getElementById("description").append(...prose(document_.info.description));
  const main = document.getElementById("operations");
  main.textContent = "";
  for (const tag of document_.tags) {
    main.append(element("h2", { textContent: tag.name }), element("p", {}, ...prose(tag.description)));
    for (const [path, operations] of Object.entries(document_.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        if (!operation.tags.includes(tag.name)) continue;
        const body = element("div", { className: "body" });
        const security = operation.security.map((entry) => Object.keys(entry).join(", ")).join(" or ") || "none";
        body.append(element("p", { textContent: "Authorization: " + security }));
        if (operation.parameters) {
          const table = element("table", {}, element("tr", {}, element("th", { textContent: "parameter" }), element("th", { textContent: "in" }), element("th", { textContent: "required" }), element("th", { textContent: "schema" })));
          for (const parameter of operation.parameters)
            table.append(element("tr", {}, element("td", {}, element("code", { textContent: parameter.name })), element("td", { textContent: parameter.in }), element("td", { textContent: parameter.required ? "yes" : "no" }), element("td", {}, element("code", { textContent: JSON.stringify(parameter.schema) }))));
          body.append(table);
        }
        if (operation.requestBody) body.append(schemaBlock("Request body", operation.requestBody.content["application/json"].schema));
        for (const [status, response] of Object.entries(operation.responses)) {
          const media = response.content && Object.entries(response.content)[0];
          const label = status + " — " + response.description;
          body.append(media ? schemaBlock(label + " (" + media[0] + ")", media[1].schema) : element("p", {}, ...prose(label)));
        }
        main.append(element("details", { className: "operation" },
          element("summary", {}, element("span", { className: "method " + method, textContent: method }), element("code", { textContent: path }), " — ", ...prose(operation.summary)),
          body));
      }
    }
  }
}, (error) => { document.getElementById("operations").textContent = "Could not load /openapi.json: " + error; });
</script>
</body>
</html>
`;

/** The page's one inline script, by its hash: what the Content-Security-Policy lets run (security-headers.ts). */
export const docsPageScriptHash = `'sha256-${createHash("sha256")
  .update(/<script>([\s\S]*?)<\/script>/.exec(docsPageHtml)![1]!)
  .digest("base64")}'`;
