// The overlay window: Hark's status while it listens, thinks or speaks.
import { mount } from "svelte";
import Overlay from "./components/Overlay.svelte";
import "./style.css";

mount(Overlay, { target: document.getElementById("app") as HTMLElement });
