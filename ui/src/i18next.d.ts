// i18next's keys are typed by the source locale: a key that en.json lacks does not compile.
import "i18next";
import type en from "./locales/en.json";

declare module "i18next" {
  interface CustomTypeOptions {
    resources: { translation: typeof en };
    returnNull: false;
  }
}
