// `npm start`: bundles the service (scripts/build.mjs, about 0.1 s) and runs the bundle in this
// process, with stack traces mapped back to src/. `npm run dev` still runs the sources through tsx.
import { pathToFileURL } from 'node:url';
import { buildService, serviceBundle } from './build.mjs';

buildService();
process.setSourceMapsEnabled(true);
await import(pathToFileURL(serviceBundle).href);
