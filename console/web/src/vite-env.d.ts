/// <reference types="vite/client" />

/** Version of the Console UI (package.json or KRUNTIMES_VERSION at build time). */
declare const __APP_VERSION__: string;
/** Build identity (KRUNTIMES_BUILD or the git commit at build time). */
declare const __APP_BUILD__: string;
/** RFC 3339 time of the build. */
declare const __APP_BUILD_TIME__: string;
