// Hark's main window: the app renders what Rust says (lib/state.svelte.ts) and calls its
// commands (lib/api.ts, over the generated lib/bindings.ts).
import { mount } from "svelte";
import App from "./App.svelte";
import "./style.css";

mount(App, { target: document.getElementById("app") as HTMLElement });
