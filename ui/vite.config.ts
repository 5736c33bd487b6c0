import { defineConfig } from "vite";

// The webview loads the built files from ui/dist (tauri.conf.json → build.frontendDist).
export default defineConfig({
  build: { outDir: "dist", emptyOutDir: true, target: "safari15", sourcemap: false },
  clearScreen: false,
});
