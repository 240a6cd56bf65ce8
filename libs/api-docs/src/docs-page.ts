/**
 * The `/docs` page: Swagger UI from the `swagger-ui-dist` package (installed with `@nestjs/swagger`),
 * started by a script file of ours, not an inline one, so the page runs under a CSP without
 * `'unsafe-inline'` scripts. Authorization entered in the page stays in the page (not persisted).
 */
export const DOCS_PREFIX = '/docs';
export const OPENAPI_URL = '/openapi.json';

/** The files of swagger-ui-dist the page loads. */
export const SWAGGER_UI_FILES: ReadonlySet<string> = new Set([
  'swagger-ui.css',
  'swagger-ui-bundle.js',
  'favicon-16x16.png',
  'favicon-32x32.png',
]);

/**
 * Scripts from this origin only, and no eval; Swagger UI sets style attributes, hence inline styles; the
 * "Try it out" calls go to this origin only; no framing, no plugins, no base-URL change.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export const DOCS_INDEX_HTML = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Model Gateway API</title>
    <link rel="icon" type="image/png" href="${DOCS_PREFIX}/favicon-32x32.png" sizes="32x32" />
    <link rel="icon" type="image/png" href="${DOCS_PREFIX}/favicon-16x16.png" sizes="16x16" />
    <link rel="stylesheet" href="${DOCS_PREFIX}/swagger-ui.css" />
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="${DOCS_PREFIX}/swagger-ui-bundle.js"></script>
    <script src="${DOCS_PREFIX}/docs-init.js"></script>
  </body>
</html>
`;

export const DOCS_INIT_JS = `'use strict';
window.ui = window.SwaggerUIBundle({
  url: ${JSON.stringify(OPENAPI_URL)},
  dom_id: '#swagger-ui',
  deepLinking: true,
  displayRequestDuration: true,
  persistAuthorization: false,
  presets: [window.SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
});
`;
