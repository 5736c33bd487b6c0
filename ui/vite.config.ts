import { svelte } from "@sveltejs/vite-plugin-svelte";
import { defineConfig } from "vite";

// Two pages: the main window and the overlay. A release build embeds ui/dist
// (tauri.conf.json → build.frontendDist); `npm run dev` serves them with hot reload for
// a debug app built without the `custom-protocol` feature (scripts/dev.sh).
export default defineConfig({
  plugins: [svelte()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "safari15",
    sourcemap: false,
    rollupOptions: { input: { main: "index.html", overlay: "overlay.html" } },
  },
  server: { port: 5173, strictPort: true },
  clearScreen: false,
});
