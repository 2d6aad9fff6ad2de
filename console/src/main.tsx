import { render } from 'preact';
import { App, applyTheme, storedTheme } from './app';
import './styles.css';

applyTheme(storedTheme());
render(<App />, document.getElementById('app') as HTMLElement);
