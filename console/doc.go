// Package console is the operator console: a single-page web application for
// finance operators and auditors, served at /ops/.
//
// It shows the review queue (riskiest first), a charge's timeline (attempts,
// audited state changes, reconciliation checks) with "query processor now"
// and manual resolution, the reattempt report with its charts and CSV export,
// and the dead-letter queue with replay. It is static HTML, CSS and JavaScript
// embedded in the binary, with no build step and no third-party resources;
// everything it shows comes from the JSON API of the same origin, called with
// the operator's API key as a Bearer token. The key is kept in the browser
// tab's sessionStorage only, never in a URL or in localStorage.
//
// [Handler] serves the files with a strict Content-Security-Policy: scripts,
// styles, images and requests from the same origin only, no inline code, no
// framing and no form submission, so values from merchants and processors,
// which the scripts only ever insert as text, cannot run as code.
package console
