import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

/** The console is served by the gateway under /console; assets get content hashes and are cached for good. */
export default defineConfig({
  root: import.meta.dirname,
  base: "/console/",
  plugins: [react()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    assetsDir: "assets",
    sourcemap: false,
    chunkSizeWarningLimit: 1_000,
  },
  logLevel: "warn",
});
